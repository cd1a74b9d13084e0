"""The keyed state's control: the layout (versioned partition function), the planners it runs,
the controller (measure, decide, plan), the payoff model, measured timings, records and reports."""
