from services.payment.entrypoints.main import main

if __name__ == "__main__":
    main()
