"""The knowledge layer: folders → chunks → vector and keyword stores.

A library that takes explicit settings (dataclasses); it knows nothing of config files, chat or UI.
"""
