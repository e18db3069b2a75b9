"""erlmcp_py.actors."""
