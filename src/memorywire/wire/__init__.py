"""memorywire.wire"""
