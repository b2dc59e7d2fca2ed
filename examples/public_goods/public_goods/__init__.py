"""An example user package: importing it registers the game ``public_goods``."""

from public_goods.game import PublicGoods

__all__ = ["PublicGoods"]
