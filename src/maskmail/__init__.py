"""maskmail: a self-hostable private email relay."""

__version__ = "0.1.0"
