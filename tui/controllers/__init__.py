"""What the chat screen does, by domain: each controller owns its workers and the widgets'
messages of its domain; the screen (tui/screens/chat.py) owns the layout and routes to them."""
