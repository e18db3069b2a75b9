"""erlmcp_py.mcp."""
