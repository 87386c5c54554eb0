"""python -m gateway_bff"""

from gateway_bff.main import main

main()
