"""The connection to Happy's server: its HTTP calls and its live socket (our own Socket.IO),
each with a fake, and the retry that never gives up."""
