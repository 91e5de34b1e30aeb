"""crashcart in Slack: ask about a failed job in a channel or DM, get the diagnosis in the thread, confirm it.

`config` reads the bot's settings, `requests` turns an ask into log paths (safely), `blocks` renders a report as
Block Kit, `actions` holds what the buttons do to the stores, `app` wires these into a Bolt app and `run`
starts it in Socket Mode or over HTTP.
"""
