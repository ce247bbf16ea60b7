"""The network: PubMed's E-utilities client (``fetch``) over bounded HTTP (``client``)."""
