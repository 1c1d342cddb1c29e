"""kerntune's MCP server (``kerntune mcp``): see ``app.py`` and ``server.py``."""
