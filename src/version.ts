/** The package version, sent upstream as the SDK name. */
export const VERSION = '0.1.0';
