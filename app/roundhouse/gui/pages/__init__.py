"""The pages of the main window, one per area of the app."""
