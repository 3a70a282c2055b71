"""Logging in and the keys: Happy's encryption, access.key, the terminal pairing, a session's cipher."""
