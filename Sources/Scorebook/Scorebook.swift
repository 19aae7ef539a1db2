// Scorebook
