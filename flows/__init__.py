"""The built-in flows (one module each), registered by name in `scenarios.registry.FLOWS`.

See `scenarios.flow_api` for the contract and `examples/echo_flow.py` for a complete custom
flow in one file.
"""
