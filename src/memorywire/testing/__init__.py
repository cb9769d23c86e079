"""memorywire.testing"""
