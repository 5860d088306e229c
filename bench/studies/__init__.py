"""Studies that are not runs of a registered algorithm on a registered problem (a
subroutine alone, a mechanism's noise); each paper's page calls its own."""
