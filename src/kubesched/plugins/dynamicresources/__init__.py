"""DynamicResources (framework/plugins/dynamicresources): devices through ResourceClaims."""
