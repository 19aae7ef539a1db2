// The fault-injection suite lands here.
