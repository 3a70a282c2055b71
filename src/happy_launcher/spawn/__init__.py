"""Sessions started without a terminal, for the app and the page: where they may start, how many,
and the process that runs them."""
