"""memorywire.governance"""
