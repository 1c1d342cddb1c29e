"""kerntune serve: the web page over the store (see app.py)."""
