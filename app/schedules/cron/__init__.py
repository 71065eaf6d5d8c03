"""Classic cron, pure: field grammar (``fields``), evaluation in a zone (``evaluate``), the
zone's transitions (``zone``), the smallest gap between fires (``gaps``) and plain-words
descriptions (``describe``)."""
