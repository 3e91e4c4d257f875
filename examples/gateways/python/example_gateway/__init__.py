"""A gateway of the agent-gateway protocol written on the Python package `turnspec generate
--lang python` makes (``agent_gateway``): the generated server over stdio, one
OpenAI-compatible model, the reference tools, approval requests under supervised profiles.
Everything is kept in memory.
"""
