from .cli import main

if __name__ == "__main__":      # a spawned worker imports this module without running it
    main()
