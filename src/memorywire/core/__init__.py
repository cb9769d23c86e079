"""memorywire.core"""
