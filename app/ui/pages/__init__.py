"""One page per module."""
