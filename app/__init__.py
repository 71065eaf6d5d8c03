"""chatcron web application and shared domain (``app.core``)."""
