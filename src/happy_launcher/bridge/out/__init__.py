"""Sessions out: each happy session linked to a Happy session, its envelopes posted from the store."""
