"""erlmcp_py.transports."""
