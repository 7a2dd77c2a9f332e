"""Core types, the ground floor: the spec, the one reader of an environment, host files read
as hostile input, text made safe to show, findings, the launch facts an adapter needs and
the asker of a launcher's own command. Imports nothing of clusterenv but
:mod:`clusterenv.exceptions`; every other folder builds on it."""
