"""The design system: tokens, light and dark palettes, the stylesheet built from them."""
