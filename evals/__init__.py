"""Offline evaluation of crashcart's diagnoses against labeled failed jobs (`crashcart eval DIR`)."""
