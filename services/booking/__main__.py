from services.booking.entrypoints.main import main

if __name__ == "__main__":
    main()
