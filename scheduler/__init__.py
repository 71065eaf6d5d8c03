"""The scheduler process and its pure time engine."""
