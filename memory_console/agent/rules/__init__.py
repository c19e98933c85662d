"""The agent's rules: pure functions over text and JSON, reading and writing no store.

remember (directives, scoring, refusal, routing documents), describe (a memory's title,
keywords and topic), classify (its type), facts (the slot table and fact differences),
requests (the user's requests to the memory), speech (whose words), statements (one memory,
one fact).
"""
