"""memorywire.embed"""
