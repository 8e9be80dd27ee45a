"""The .par grammar, shipped as package data (`par.lark`)."""
