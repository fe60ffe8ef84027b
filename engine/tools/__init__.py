"""Tool table runtime: handler registry, argument validation, dispatch, action records."""
