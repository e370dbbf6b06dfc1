"""Falcon resources. Each is thin: parse, hand over, render."""
