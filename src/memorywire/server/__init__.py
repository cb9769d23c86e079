"""memorywire.server"""
