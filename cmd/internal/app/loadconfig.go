package app

// LoadConfig reads and validates the configuration from getenv, as Run
// does before a command runs: for a tool that changes the environment a
// command sees (devstack dev pointing live mode at test servers) and must
// read the result the way the service will.
func LoadConfig(getenv func(string) string) (Config, error) { return loadConfig(getenv) }
