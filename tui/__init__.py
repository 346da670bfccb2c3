"""The Textual front end over `assistant`."""
