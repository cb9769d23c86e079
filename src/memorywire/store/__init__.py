"""memorywire.store"""
