"""The bridge to Happy's server: the account's credentials, terminal pairing, and (later issues'
slices) sessions relayed end-to-end encrypted to the Happy app."""
