"""What the app does with our sessions and this machine: messages in, RPCs, agentState,
presence, spawn and stop."""
