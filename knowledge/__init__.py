"""What crashcart knows, as data plus the code that loads it: taxonomy, signatures, runbooks, XIDs."""
