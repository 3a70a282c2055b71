"""The bridge's process: `happy daemon start|stop|status`, its pid and status files, its serve loop."""
