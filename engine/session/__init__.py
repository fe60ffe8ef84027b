"""One conversation: the session loop between the user side and the agent side, the sides and their
backends (replay, noop, openai:, ws://), voice sessions, run settings.
"""
