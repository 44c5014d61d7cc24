"""Stand-in for websockets (tools/peer/fastgs.sh): FastGS imports it for its optional viewer
(network_gui_ws, --websockets), which the peer runs never start."""
