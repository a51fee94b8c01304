"""The domain: hardware, settings, sampling. Qt-free and web-framework-free."""
