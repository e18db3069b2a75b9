"""The bundled example servers of ``erlmcp-py serve``: :mod:`~erlmcp_py.app.examples.server`
(the default ``--server``), with the rest of the conformance suite's contract in
:mod:`~erlmcp_py.app.examples.everything` and :mod:`~erlmcp_py.app.examples.conformance`."""
