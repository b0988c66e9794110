"""The API-server test tier: a real kube-apiserver on loopback (server.py) and a minimal client
(client.py)."""
