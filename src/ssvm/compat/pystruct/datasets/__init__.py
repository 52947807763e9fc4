"""pystruct's toy data sets and loaders (``pystruct.datasets``)."""

from ssvm.compat.pystruct.datasets.loaders import (
    load_letters,
    load_scene,
    load_snakes,
    make_snakes,
)
from ssvm.compat.pystruct.datasets.synthetic_grids import (
    binary,
    generate_big_checker,
    generate_blocks,
    generate_blocks_multinomial,
    generate_checker,
    generate_checker_multinomial,
    generate_crosses,
    generate_crosses_explicit,
    generate_easy,
    make_simple_2x2,
    multinomial,
)

__all__ = ["binary", "generate_big_checker", "generate_blocks", "generate_blocks_multinomial",
           "generate_checker", "generate_checker_multinomial", "generate_crosses",
           "generate_crosses_explicit", "generate_easy", "load_letters", "load_scene",
           "load_snakes", "make_simple_2x2", "make_snakes", "multinomial"]
